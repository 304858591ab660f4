import { escapeXml, MAIN_NS, XML_HEAD } from './xml.ts';

/** What a cell looks like: number format, bold, the header look (bold, fill, bottom border), quote prefix. */
export interface CellLook {
  numFmt?: string | undefined;
  bold?: boolean;
  header?: boolean;
  quote?: boolean;
}

/** Formats Excel knows by number (ECMA-376 18.8.30); others are declared from id 164 on. */
const BUILT_IN_FORMATS: Record<string, number> = { General: 0, '0': 1, '0.00': 2, '#,##0': 3, '#,##0.00': 4 };

/** The header's fill colour (light blue-grey), as the workbooks have always had it. */
const HEADER_FILL = 'FFE8EEF7';

/**
 * The workbook's cell formats (`cellXfs`), one per distinct look, numbered as they are first asked
 * for; index 0 is the default look. styles.xml is written once the sheets are done.
 */
export class Styles {
  private readonly looks = new Map<string, number>([['||||', 0]]);
  private readonly xfs: string[] = ['<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'];
  private readonly customFormats = new Map<string, number>();

  /** The xf index of a look. */
  of(look: CellLook): number {
    const key = `${look.numFmt ?? ''}|${look.bold ? 1 : ''}|${look.header ? 1 : ''}|${look.quote ? 1 : ''}|`;
    let index = this.looks.get(key);
    if (index === undefined) {
      index = this.xfs.length;
      this.xfs.push(this.xf(look));
      this.looks.set(key, index);
    }
    return index;
  }

  private formatId(numFmt: string): number {
    const builtIn = BUILT_IN_FORMATS[numFmt];
    if (builtIn !== undefined) return builtIn;
    let id = this.customFormats.get(numFmt);
    if (id === undefined) {
      id = 164 + this.customFormats.size;
      this.customFormats.set(numFmt, id);
    }
    return id;
  }

  private xf(look: CellLook): string {
    const numFmtId = look.numFmt ? this.formatId(look.numFmt) : 0;
    const bold = look.bold || look.header;
    let attributes = `numFmtId="${numFmtId}" fontId="${bold ? 1 : 0}" fillId="${look.header ? 2 : 0}" borderId="${look.header ? 1 : 0}" xfId="0"`;
    if (numFmtId !== 0) attributes += ' applyNumberFormat="1"';
    if (bold) attributes += ' applyFont="1"';
    if (look.header) attributes += ' applyFill="1" applyBorder="1"';
    if (look.quote) attributes += ' quotePrefix="1"';
    return `<xf ${attributes}/>`;
  }

  /** xl/styles.xml: fonts (regular, bold), fills (the two Excel reserves, the header's), borders (none, thin bottom). */
  xml(): string {
    const formats = [...this.customFormats].map(([code, id]) => `<numFmt numFmtId="${id}" formatCode="${escapeXml(code)}"/>`);
    const font = (bold: boolean) => `<font>${bold ? '<b/>' : ''}<sz val="11"/><name val="Calibri"/><family val="2"/></font>`;
    return (
      `${XML_HEAD}<styleSheet xmlns="${MAIN_NS}">` +
      (formats.length ? `<numFmts count="${formats.length}">${formats.join('')}</numFmts>` : '') +
      `<fonts count="2">${font(false)}${font(true)}</fonts>` +
      '<fills count="3"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill>' +
      `<fill><patternFill patternType="solid"><fgColor rgb="${HEADER_FILL}"/></patternFill></fill></fills>` +
      '<borders count="2"><border><left/><right/><top/><bottom/><diagonal/></border>' +
      '<border><left/><right/><top/><bottom style="thin"/><diagonal/></border></borders>' +
      '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>' +
      `<cellXfs count="${this.xfs.length}">${this.xfs.join('')}</cellXfs>` +
      '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>' +
      '</styleSheet>'
    );
  }
}
